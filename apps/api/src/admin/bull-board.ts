import { randomBytes } from 'node:crypto';
import { createBullBoard } from '@bull-board/api';
import { BullMQAdapter } from '@bull-board/api/bullMQAdapter';
import { ExpressAdapter } from '@bull-board/express';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { ApiKeysService, roleAllows } from '@punctual/core';
import { ExecutionsQueue } from '@punctual/queue';
import { RedisService } from '@punctual/redis';
import cookieParser from 'cookie-parser';
import express, { type NextFunction, type Request, type Response } from 'express';

export const BOARD_PATH = '/admin/queues';
const LOGIN_PATH = '/admin/login';
const COOKIE = 'punctual_board';
const SESSION_TTL_S = 3600;

/**
 * Bull Board at `/admin/queues`, admin only — pages, assets and its own API alike. A browser logs in
 * at `/admin/login` with an admin key and gets a short-lived, HttpOnly session cookie (the session
 * lives in Redis, so any API replica accepts it); scripts may send the key as a bearer token.
 */
export function mountBullBoard(app: NestExpressApplication): void {
  const keys = app.get(ApiKeysService);
  const redis = app.get(RedisService);
  const sessionKey = (token: string) => redis.key('board-session', token);

  const board = new ExpressAdapter();
  board.setBasePath(BOARD_PATH);
  createBullBoard({ queues: [new BullMQAdapter(app.get(ExecutionsQueue).queue, { readOnlyMode: false })], serverAdapter: board });

  const requireAdmin = async (req: Request, res: Response, next: NextFunction) => {
    const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const principal = bearer ? await keys.authenticate(bearer) : null;
    if (principal && roleAllows(principal.role, 'admin')) return next();
    if (principal) return res.status(403).json({ error: { code: 'forbidden', message: 'Bull Board needs the admin role', details: [] } });
    const token = (req.cookies as Record<string, string> | undefined)?.[COOKIE];
    if (token && /^[A-Za-z0-9_-]{20,}$/.test(token) && (await redis.client.get(sessionKey(token)))) return next();
    if (req.method === 'GET' && req.accepts('html') && !req.path.startsWith('/api')) return res.redirect(LOGIN_PATH);
    res.status(401).json({ error: { code: 'unauthenticated', message: 'Bull Board needs an admin key', details: [] } });
  };

  const http = app.getHttpAdapter().getInstance() as express.Express;
  http.get(LOGIN_PATH, (_req, res) => {
    res.type('html').send(LOGIN_PAGE);
  });
  http.post(LOGIN_PATH, express.urlencoded({ extended: false, limit: '4kb' }), async (req: Request, res: Response) => {
    const principal = typeof req.body?.key === 'string' ? await keys.authenticate(req.body.key) : null;
    if (!principal || !roleAllows(principal.role, 'admin')) return res.status(401).type('html').send(LOGIN_PAGE.replace('<!--error-->', '<p role="alert">That is not an admin key.</p>'));
    const token = randomBytes(24).toString('base64url');
    await redis.client.set(sessionKey(token), principal.actor, 'EX', SESSION_TTL_S);
    res.cookie(COOKIE, token, { httpOnly: true, sameSite: 'strict', path: '/admin', maxAge: SESSION_TTL_S * 1000, secure: req.secure });
    res.redirect(303, BOARD_PATH);
  });
  http.use(BOARD_PATH, cookieParser(), (req, res, next) => void requireAdmin(req, res, next).catch(next), board.getRouter());
}

const LOGIN_PAGE = `<!doctype html><html><head><meta charset="utf-8"><title>Punctual — sign in</title>
<style>body{font-family:system-ui,sans-serif;max-width:28rem;margin:4rem auto}input{width:100%;padding:.5rem;margin:.5rem 0}</style></head>
<body><h1>Punctual queues</h1><!--error--><form method="post" action="${LOGIN_PATH}">
<label for="key">Admin API key</label><input id="key" name="key" type="password" autocomplete="off" required>
<button type="submit">Sign in</button></form></body></html>`;
