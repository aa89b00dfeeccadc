import type { NestExpressApplication } from '@nestjs/platform-express';
import { ApiKeysService, roleAllows } from '@punctual/auth';
import type { ApiKeyRole } from '@punctual/db';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { BrowserSessionStore, SESSION_COOKIE, SESSION_TTL_S } from '../auth/browser-session.store.js';
import type { ConsoleFiles } from '../console/console-files.js';
import { errorEnvelope } from '../http/api-error.js';

export const LOGIN_PATH = '/admin/login';
export const LOGOUT_PATH = '/admin/logout';

/**
 * Browser access to the pages that are not JSON API (the console, Bull Board, the OpenAPI UI):
 * sign in once at `/admin/login` with an API key and get a short-lived HttpOnly cookie; sign out
 * at `/admin/logout`. Scripts may send the key as a bearer token instead.
 */
export class BrowserSessions {
  private readonly keys: ApiKeysService;
  private readonly store: BrowserSessionStore;

  constructor(
    app: NestExpressApplication,
    private readonly files: ConsoleFiles,
  ) {
    this.keys = app.get(ApiKeysService);
    this.store = app.get(BrowserSessionStore);
    const http = app.getHttpAdapter().getInstance() as express.Express;
    http.get(LOGIN_PATH, (_req, res, next) => void this.sendLoginPage(res, 200).catch(next));
    http.post(
      LOGIN_PATH,
      express.urlencoded({ extended: false, limit: '4kb' }),
      (req, res, next) => void this.login(req, res).catch(next),
    );
    http.post(LOGOUT_PATH, (req, res, next) => void this.logout(req, res).catch(next));
  }

  /**
   * Middleware: the request must carry a key or a session of at least `role`; with `wholeCluster`
   * (a page showing every namespace's data, as Bull Board does), one not scoped to namespaces.
   */
  require(role: ApiKeyRole, options: { wholeCluster?: boolean } = {}): RequestHandler {
    return (req, res, next) => void this.check(role, options.wholeCluster ?? false, req, res, next).catch(next);
  }

  private async check(
    role: ApiKeyRole,
    wholeCluster: boolean,
    req: Request,
    res: Response,
    next: NextFunction,
  ): Promise<void> {
    const bearer = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '')?.[1];
    const principal = bearer ? await this.keys.authenticate(bearer) : await this.store.principalOf(req);
    const scoped = wholeCluster && principal?.namespaces != null;
    if (principal && roleAllows(principal.role, role) && !scoped) return next();
    if (principal) {
      const needs = scoped
        ? `this page shows every namespace's data: it needs a key of the whole cluster`
        : `this page needs the ${role} role`;
      res.status(403).json(errorEnvelope('forbidden', needs));
      return;
    }
    if (req.method === 'GET' && req.accepts(['json', 'html']) === 'html') {
      res.redirect(`${LOGIN_PATH}?next=${encodeURIComponent(req.originalUrl)}`);
      return;
    }
    res
      .status(401)
      .json(errorEnvelope('unauthenticated', 'sign in at /admin/login or send Authorization: Bearer <api key>'));
  }

  private async login(req: Request, res: Response): Promise<void> {
    const principal = typeof req.body?.key === 'string' ? await this.keys.authenticate(req.body.key) : null;
    if (!principal) return this.sendLoginPage(res, 401, 'That key is not valid.');
    const token = await this.store.open(principal);
    res.cookie(SESSION_COOKIE, token, {
      httpOnly: true,
      sameSite: 'strict',
      path: '/',
      maxAge: SESSION_TTL_S * 1000,
      secure: req.secure,
    });
    res.redirect(303, localPath(req.query.next) ?? '/');
  }

  private async logout(req: Request, res: Response): Promise<void> {
    await this.store.close(req);
    res.clearCookie(SESSION_COOKIE, { httpOnly: true, sameSite: 'strict', path: '/', secure: req.secure });
    res.redirect(303, LOGIN_PATH);
  }

  private sendLoginPage(res: Response, status: number, error = ''): Promise<void> {
    return this.files.sendPage(
      res.status(status),
      'login',
      error ? `<p class="login-error" role="alert">${error}</p>` : '',
    );
  }
}

/**
 * `next` when it is a path on this server, else null: never `//host` or `/\host` (which browsers
 * read as another origin), so signing in cannot be turned into a redirect elsewhere.
 */
export function localPath(next: unknown): string | null {
  return typeof next === 'string' && next.length <= 2048 && /^\/(?![/\\])[^\s\\]*$/.test(next) ? next : null;
}
