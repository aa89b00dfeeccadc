import { randomBytes } from 'node:crypto';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { ApiKeysService, type Principal, roleAllows } from '@punctual/auth';
import type { ApiKeyRole } from '@punctual/db';
import { RedisService } from '@punctual/redis';
import cookieParser from 'cookie-parser';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';

const LOGIN_PATH = '/admin/login';
const COOKIE = 'punctual_session';
const SESSION_TTL_S = 3600;

/**
 * Browser access to the pages that are not JSON API (Bull Board, the OpenAPI UI): sign in once at
 * `/admin/login` with an API key and get a short-lived HttpOnly cookie. The session lives in Redis,
 * so every API replica accepts it; scripts may send the key as a bearer token instead.
 */
export class BrowserSessions {
  private readonly keys: ApiKeysService;
  private readonly redis: RedisService;

  constructor(app: NestExpressApplication) {
    this.keys = app.get(ApiKeysService);
    this.redis = app.get(RedisService);
    const http = app.getHttpAdapter().getInstance() as express.Express;
    http.get(LOGIN_PATH, (_req, res) => void res.type('html').send(loginPage()));
    http.post(LOGIN_PATH, express.urlencoded({ extended: false, limit: '4kb' }), (req, res, next) => void this.login(req, res).catch(next));
  }

  /** Middleware: the request must carry a key or a session of at least `role`. */
  require(role: ApiKeyRole): RequestHandler[] {
    return [cookieParser(), (req, res, next) => void this.check(role, req, res, next).catch(next)];
  }

  private async check(role: ApiKeyRole, req: Request, res: Response, next: NextFunction): Promise<void> {
    const principal = await this.principalOf(req);
    if (principal && roleAllows(principal.role, role)) return next();
    if (principal) return void res.status(403).json({ error: { code: 'forbidden', message: `this page needs the ${role} role`, details: [] } });
    if (req.method === 'GET' && req.accepts(['json', 'html']) === 'html') return void res.redirect(`${LOGIN_PATH}?next=${encodeURIComponent(req.originalUrl)}`);
    res.status(401).json({ error: { code: 'unauthenticated', message: 'sign in at /admin/login or send Authorization: Bearer <api key>', details: [] } });
  }

  private async principalOf(req: Request): Promise<Principal | null> {
    const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    if (bearer) return this.keys.authenticate(bearer);
    const token = (req.cookies as Record<string, string> | undefined)?.[COOKIE];
    if (!token || !/^[A-Za-z0-9_-]{20,}$/.test(token)) return null;
    const stored = await this.redis.client.get(this.redis.key('browser-session', token));
    return stored ? (JSON.parse(stored) as Principal) : null;
  }

  private async login(req: Request, res: Response): Promise<void> {
    const principal = typeof req.body?.key === 'string' ? await this.keys.authenticate(req.body.key) : null;
    if (!principal) return void res.status(401).type('html').send(loginPage('That key is not valid.'));
    const token = randomBytes(24).toString('base64url');
    await this.redis.client.set(this.redis.key('browser-session', token), JSON.stringify(principal), 'EX', SESSION_TTL_S);
    res.cookie(COOKIE, token, { httpOnly: true, sameSite: 'strict', path: '/', maxAge: SESSION_TTL_S * 1000, secure: req.secure });
    const next = typeof req.query.next === 'string' && /^\/(admin\/queues|docs)(\/|$|\?)/.test(req.query.next) ? req.query.next : '/admin/queues';
    res.redirect(303, next);
  }
}

function loginPage(error = ''): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>Punctual — sign in</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:4rem auto}input{width:100%;padding:.5rem;margin:.5rem 0}</style></head>
<body><h1>Punctual</h1>${error ? `<p role="alert">${error}</p>` : ''}<form method="post">
<label for="key">API key</label><input id="key" name="key" type="password" autocomplete="off" required>
<button type="submit">Sign in</button></form></body></html>`;
}
