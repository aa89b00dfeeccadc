export { RedisModule } from './redis.module.js';
export { RedisService } from './redis.service.js';
