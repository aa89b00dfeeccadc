import { randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { CONSOLE_HEADER } from '@punctual/contract';
import type { Principal } from '@punctual/auth';
import { RedisService } from '@punctual/redis';
import type { Request } from 'express';

/** The cookie a browser gets at `/admin/login`. */
export const SESSION_COOKIE = 'punctual_session';
export const SESSION_TTL_S = 3600;

const TOKEN = /^[A-Za-z0-9_-]{20,64}$/;

/**
 * Browser sessions in Redis, so every API replica accepts them: a random token in an HttpOnly,
 * SameSite=Strict cookie names the principal of the key that signed in, for {@link SESSION_TTL_S}.
 */
@Injectable()
export class BrowserSessionStore {
  constructor(private readonly redis: RedisService) {}

  /** A new session for `principal`; returns its token. */
  async open(principal: Principal): Promise<string> {
    const token = randomBytes(24).toString('base64url');
    await this.redis.client.set(this.key(token), JSON.stringify(principal), 'EX', SESSION_TTL_S);
    return token;
  }

  /**
   * The principal of an API call the console makes: its session cookie, and only with the
   * {@link CONSOLE_HEADER} (a cross-site form or image carries the cookie but cannot add a header).
   */
  consoleCallPrincipal(req: Request): Promise<Principal | null> {
    return req.headers[CONSOLE_HEADER] === '1' ? this.principalOf(req) : Promise.resolve(null);
  }

  /** The principal of the request's session cookie, or null (none, malformed, expired or closed). */
  async principalOf(req: Request): Promise<Principal | null> {
    const token = tokenOf(req);
    if (!token) return null;
    const stored = await this.redis.client.get(this.key(token));
    if (!stored) return null;
    const principal = JSON.parse(stored) as Principal;
    return { ...principal, namespaces: principal.namespaces ?? null };
  }

  /** Ends the request's session, if it has one. */
  async close(req: Request): Promise<void> {
    const token = tokenOf(req);
    if (token) await this.redis.client.del(this.key(token));
  }

  private key(token: string): string {
    return this.redis.key('browser-session', token);
  }
}

function tokenOf(req: Request): string | null {
  const token = (req.cookies as Record<string, string> | undefined)?.[SESSION_COOKIE];
  return token && TOKEN.test(token) ? token : null;
}
