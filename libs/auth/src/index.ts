export { ApiKeysService, type Principal, roleAllows } from './api-keys.service.js';
export { AuthModule } from './auth.module.js';
