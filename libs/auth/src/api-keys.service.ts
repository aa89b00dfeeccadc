import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { CONFIG, type Config } from '@punctual/config';
import { type ApiKey, type ApiKeyRole, ApiKeysRepository } from '@punctual/db';

/**
 * Who a request acts as. `actor` names the key (its prefix), never the key itself; `namespaces`
 * are the ones a scoped key may see, null for a key of the whole cluster.
 */
export interface Principal {
  actor: string;
  role: ApiKeyRole;
  namespaces: readonly string[] | null;
}

/** Whether the principal may see (and, as its role allows, act in) the namespace. */
export function canSeeNamespace(principal: Principal, namespace: string): boolean {
  return principal.namespaces === null || principal.namespaces.includes(namespace);
}

const ROLE_RANK: Record<ApiKeyRole, number> = { viewer: 0, operator: 1, admin: 2 };

/** True when `role` may do what `required` may. */
export function roleAllows(role: ApiKeyRole, required: ApiKeyRole): boolean {
  return ROLE_RANK[role] >= ROLE_RANK[required];
}

const sha256 = (value: string) => createHash('sha256').update(value).digest();
const KEY_FORMAT = /^(pk_[A-Za-z0-9]{10})_([A-Za-z0-9_-]{20,})$/;

/**
 * API keys: `pk_<id>_<secret>`, stored as the `pk_<id>` prefix (for lookup) and a SHA-256 of the
 * whole key (keys are random, so a fast hash is enough); compared in constant time. The
 * `ADMIN_API_KEY` of the environment is accepted as an admin key without being stored.
 */
@Injectable()
export class ApiKeysService {
  private readonly bootstrap: Buffer | null;

  constructor(
    @Inject(CONFIG) config: Config,
    private readonly keys: ApiKeysRepository,
  ) {
    this.bootstrap = config.adminApiKey ? sha256(config.adminApiKey) : null;
  }

  /** Creates a key; the clear key is returned here only. */
  async create(
    name: string,
    role: ApiKeyRole,
    namespaces: readonly string[] | null = null,
  ): Promise<{ key: string; record: ApiKey }> {
    const id = randomBytes(16).toString('base64url').replace(/[-_]/g, '').slice(0, 10).padEnd(10, '0');
    const key = `pk_${id}_${randomBytes(24).toString('base64url')}`;
    const record = await this.keys.create({
      name,
      prefix: `pk_${id}`,
      hash: sha256(key).toString('hex'),
      role,
      namespaces: namespaces ? [...new Set(namespaces)].sort() : [],
    });
    return { key, record };
  }

  /** The principal a presented key stands for, or null. */
  async authenticate(presented: string): Promise<Principal | null> {
    const digest = sha256(presented);
    if (this.bootstrap && timingSafeEqual(digest, this.bootstrap))
      return { actor: 'admin-api-key', role: 'admin', namespaces: null };
    const match = KEY_FORMAT.exec(presented);
    if (!match) return null;
    const record = await this.keys.findActiveByPrefix(match[1]!);
    if (!record || !timingSafeEqual(digest, Buffer.from(record.hash, 'hex'))) return null;
    void this.keys.touch(record.id); // never rejects (best effort); the request does not wait for it
    return { actor: record.prefix, role: record.role, namespaces: scopeOf(record) };
  }

  list(): Promise<ApiKey[]> {
    return this.keys.list();
  }

  revoke(id: string): Promise<ApiKey | null> {
    return this.keys.revoke(id);
  }

  /** Whether any key can authenticate (the environment's or a stored one). */
  async anyConfigured(): Promise<boolean> {
    return this.bootstrap !== null || (await this.keys.countActive()) > 0;
  }
}

/** The namespaces a stored key may see: null (the whole cluster) when it names none. */
export function scopeOf(record: Pick<ApiKey, 'namespaces'>): string[] | null {
  return record.namespaces.length > 0 ? record.namespaces : null;
}
