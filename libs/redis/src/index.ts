/**
 * Redis connections of a process (`RedisService`), every key under the configured prefix;
 * commands on one shared client, BullMQ and subscribers on connections of their own.
 *
 * @imports @punctual/config
 * @packageDocumentation
 */
export { RedisModule } from './redis.module.js';
export { connectRedis, type RedisConnection, RedisService } from './redis.service.js';
