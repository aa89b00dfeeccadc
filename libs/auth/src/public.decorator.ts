import { SetMetadata } from '@nestjs/common';

export const PUBLIC_ROUTE = 'punctual:public';

/** A route that needs no API key (health probes). */
export const Public = (): ClassDecorator & MethodDecorator => SetMetadata(PUBLIC_ROUTE, true);
