import { Injectable } from '@nestjs/common';
import { bestEffort } from '@punctual/metrics';
import type { ApiKey, ApiKeyRole } from './generated/prisma/client.js';
import { PrismaService } from './prisma.service.js';

/** Owns `api_key`: keys are stored as a lookup prefix and a hash, never in clear. */
@Injectable()
export class ApiKeysRepository {
  constructor(private readonly prisma: PrismaService) {}

  create(data: {
    name: string;
    prefix: string;
    hash: string;
    role: ApiKeyRole;
    namespaces: string[];
  }): Promise<ApiKey> {
    return this.prisma.apiKey.create({ data });
  }

  findActiveByPrefix(prefix: string): Promise<ApiKey | null> {
    return this.prisma.apiKey.findFirst({ where: { prefix, revokedAt: null } });
  }

  list(): Promise<ApiKey[]> {
    return this.prisma.apiKey.findMany({ orderBy: { createdAt: 'asc' } });
  }

  async revoke(id: string): Promise<ApiKey | null> {
    const { count } = await this.prisma.apiKey.updateMany({
      where: { id, revokedAt: null },
      data: { revokedAt: new Date() },
    });
    return count ? this.prisma.apiKey.findUnique({ where: { id } }) : null;
  }

  /** Best effort: a failed touch must not fail the request it authenticates. */
  async touch(id: string): Promise<void> {
    await bestEffort(this.prisma.apiKey.update({ where: { id }, data: { lastUsedAt: new Date() } }), 'api-keys.touch');
  }

  countActive(): Promise<number> {
    return this.prisma.apiKey.count({ where: { revokedAt: null } });
  }
}
