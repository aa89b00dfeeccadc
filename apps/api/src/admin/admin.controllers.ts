import { Body, Controller, Delete, Get, HttpCode, Param, ParseUUIDPipe, Post, Query } from '@nestjs/common';
import { ApiBearerAuth, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import { ApiKeysService, type Principal, WorkerDirectory } from '@punctual/core';
import { type ApiKey, AuditRepository } from '@punctual/db';
import { IsIn, IsString, Matches, MaxLength } from 'class-validator';
import { CurrentPrincipal, RequireRole } from '../auth/roles.js';
import { ApiError } from '../http/api-error.js';
import { AuditQuery, decodeCursor, encodeCursor } from '../http/pagination.js';

export class CreateApiKeyDto {
  @ApiProperty({ example: 'ci-deployer' }) @IsString() @MaxLength(128) @Matches(/^[\w .:@-]+$/) name!: string;
  @ApiProperty({ enum: ['viewer', 'operator', 'admin'], example: 'operator' }) @IsIn(['viewer', 'operator', 'admin']) role!: 'viewer' | 'operator' | 'admin';
}

const presentKey = (k: ApiKey) => ({
  id: k.id, name: k.name, prefix: k.prefix, role: k.role,
  createdAt: k.createdAt.toISOString(), lastUsedAt: k.lastUsedAt?.toISOString() ?? null, revokedAt: k.revokedAt?.toISOString() ?? null,
});

@ApiTags('api-keys')
@ApiBearerAuth()
@RequireRole('admin')
@Controller('v1/api-keys')
export class ApiKeysController {
  constructor(
    private readonly keys: ApiKeysService,
    private readonly audit: AuditRepository,
  ) {}

  @Post()
  @ApiOperation({ summary: 'Create an API key', description: 'The key is in the response, this once; only its hash is stored.' })
  async create(@Body() body: CreateApiKeyDto, @CurrentPrincipal() actor: Principal) {
    const { key, record } = await this.keys.create(body.name, body.role);
    await this.audit.record({ actor: actor.actor, action: 'api_key.create', target: record.prefix, after: presentKey(record) });
    return { ...presentKey(record), key };
  }

  @Get()
  @ApiOperation({ summary: 'List API keys (never the keys themselves)' })
  async list() {
    return { items: (await this.keys.list()).map(presentKey) };
  }

  @Delete(':id')
  @HttpCode(204)
  @ApiOperation({ summary: 'Revoke an API key' })
  async revoke(@Param('id', new ParseUUIDPipe({ exceptionFactory: () => new ApiError(404, 'not_found', 'no API key with that id') })) id: string, @CurrentPrincipal() actor: Principal) {
    const revoked = await this.keys.revoke(id);
    if (!revoked) throw new ApiError(404, 'not_found', 'no active API key with that id');
    await this.audit.record({ actor: actor.actor, action: 'api_key.revoke', target: revoked.prefix, after: presentKey(revoked) });
  }
}

@ApiTags('audit')
@ApiBearerAuth()
@RequireRole('admin')
@Controller('v1/audit')
export class AuditController {
  constructor(private readonly audit: AuditRepository) {}

  @Get()
  @ApiOperation({ summary: 'The audit log, newest first', description: 'Every admin change: actor key, action, target, before/after.' })
  async list(@Query() query: AuditQuery) {
    const limit = query.limit ?? 50;
    const before = query.cursor ? BigInt(decodeCursor<{ id: string }>(query.cursor).id) : undefined;
    const items = await this.audit.list({ actor: query.actor, action: query.action, target: query.target }, limit, before);
    const last = items.length === limit ? items[items.length - 1] : undefined;
    return {
      items: items.map((a) => ({ id: a.id.toString(), actor: a.actor, action: a.action, target: a.target, before: a.before, after: a.after, at: a.at.toISOString() })),
      nextCursor: last ? encodeCursor({ id: last.id.toString() }) : null,
    };
  }
}

@ApiTags('handlers')
@ApiBearerAuth()
@Controller('v1/handlers')
export class HandlersController {
  constructor(private readonly directory: WorkerDirectory) {}

  @Get()
  @ApiOperation({ summary: 'Handlers offered by the live workers' })
  async list() {
    return { items: await this.directory.handlers() };
  }
}
