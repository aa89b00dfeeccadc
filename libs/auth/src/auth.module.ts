import { Module } from '@nestjs/common';
import { ApiKeysService } from './api-keys.service.js';

/** API keys: who a request acts as, and what that role may do. Needs ConfigModule and DbModule. */
@Module({ providers: [ApiKeysService], exports: [ApiKeysService] })
export class AuthModule {}
