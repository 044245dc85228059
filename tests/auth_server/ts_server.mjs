// The TypeScript SDK's own server-side authorization, as a second real authorization
// server for mcpsync's end-to-end tests (the first is oidc-provider, server.mjs).
//
// Two listeners on 127.0.0.1 in one process, as a deployment would split them:
// * the authorization server: the SDK's mcpAuthRouter (RFC 8414 metadata, dynamic
//   registration, /authorize with PKCE S256, /token, /revoke) over an in-memory
//   OAuthServerProvider written here: login and consent are approved at once (user
//   "alice"), codes are single-use, refresh tokens rotate strictly and reusing one
//   revokes its whole family;
// * the MCP server: the SDK's McpServer (stateless Streamable HTTP) behind the SDK's
//   requireBearerAuth (401 + resource_metadata + scope "mcp:read", audience checked
//   with expectedResource) and a step-up check: the "write" tool needs mcp:write too
//   (403 insufficient_scope with the full scope set).
//
// GET /test/stats on the MCP server reports the counters of both.  Prints
// "PORT=<mcp port>" once both listen.  Usage: node ts_server.mjs [--ttl SECONDS]
import { randomBytes } from 'node:crypto';
import express from 'express';
import * as z from 'zod/v4';
import { mcpAuthRouter, mcpAuthMetadataRouter, createOAuthMetadata } from '@modelcontextprotocol/sdk/server/auth/router.js';
import { requireBearerAuth } from '@modelcontextprotocol/sdk/server/auth/middleware/bearerAuth.js';
import { InvalidGrantError, InvalidTargetError, InvalidTokenError } from '@modelcontextprotocol/sdk/server/auth/errors.js';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';

const ttlArg = process.argv.indexOf('--ttl');
const accessTokenTTL = ttlArg > 0 ? Number(process.argv[ttlArg + 1]) : 300;
const SCOPES = ['mcp:read', 'mcp:write'];
const stats = { register: 0, authorize: 0, token: 0, refresh: 0, reuse: 0, 401: 0, 403: 0, ok: 0 };
const secret = () => randomBytes(24).toString('base64url');

class Clients {
  constructor() { this.clients = new Map(); }
  async getClient(id) { return this.clients.get(id); }
  async registerClient(client) {
    stats.register += 1;
    this.clients.set(client.client_id, client);
    return client;
  }
}

class Provider {
  constructor(resource) {
    this.resource = resource; // the only audience this server issues tokens for
    this.clientsStore = new Clients();
    this.codes = new Map();
    this.access = new Map();
    this.refresh = new Map(); // token -> { family, used, clientId, scopes }
    this.deadFamilies = new Set();
  }

  checkResource(resource) {
    if (!resource || resource.href !== this.resource.href) {
      throw new InvalidTargetError(`tokens are issued for ${this.resource.href} only`);
    }
  }

  async authorize(client, params, res) {
    stats.authorize += 1;
    const code = secret();
    const scopes = params.scopes?.length ? params.scopes.filter((s) => SCOPES.includes(s)) : ['mcp:read'];
    this.codes.set(code, { clientId: client.client_id, params: { ...params, scopes } });
    const target = new URL(params.redirectUri);
    target.searchParams.set('code', code);
    if (params.state !== undefined) target.searchParams.set('state', params.state);
    res.redirect(302, target.href);
  }

  async challengeForAuthorizationCode(client, code) {
    const entry = this.codes.get(code);
    if (!entry || entry.clientId !== client.client_id) throw new InvalidGrantError('unknown code');
    return entry.params.codeChallenge;
  }

  issue(clientId, scopes, family) {
    const access = secret();
    const refresh = secret();
    this.access.set(access, { clientId, scopes, expiresAt: Math.floor(Date.now() / 1000) + accessTokenTTL });
    this.refresh.set(refresh, { clientId, scopes, family, used: false });
    return { access_token: access, token_type: 'Bearer', expires_in: accessTokenTTL, refresh_token: refresh, scope: scopes.join(' ') };
  }

  async exchangeAuthorizationCode(client, code, _verifier, redirectUri, resource) {
    stats.token += 1;
    const entry = this.codes.get(code);
    this.codes.delete(code); // single use, whatever happens next
    if (!entry || entry.clientId !== client.client_id) throw new InvalidGrantError('unknown or used code');
    if (redirectUri !== entry.params.redirectUri) throw new InvalidGrantError('redirect_uri differs');
    this.checkResource(resource);
    this.checkResource(entry.params.resource);
    return this.issue(client.client_id, entry.params.scopes, secret());
  }

  async exchangeRefreshToken(client, token, scopes, resource) {
    stats.token += 1;
    stats.refresh += 1;
    const entry = this.refresh.get(token);
    if (!entry || entry.clientId !== client.client_id || this.deadFamilies.has(entry.family)) {
      throw new InvalidGrantError('unknown or revoked refresh token');
    }
    if (entry.used) {
      stats.reuse += 1;
      this.deadFamilies.add(entry.family); // a replayed refresh token: revoke the family
      throw new InvalidGrantError('refresh token reused');
    }
    this.checkResource(resource);
    entry.used = true;
    const granted = scopes?.length ? scopes.filter((s) => entry.scopes.includes(s)) : entry.scopes;
    return this.issue(client.client_id, granted, entry.family);
  }

  async verifyAccessToken(token) {
    const entry = this.access.get(token);
    if (!entry) throw new InvalidTokenError('unknown token');
    return { token, clientId: entry.clientId, scopes: entry.scopes, expiresAt: entry.expiresAt, resource: this.resource };
  }

  async revokeToken(client, { token }) {
    this.access.delete(token);
    this.refresh.delete(token);
  }
}

function mcpServer() {
  const server = new McpServer({ name: 'ts-sdk-protected', version: '1.0.0' });
  server.registerTool('whoami', { description: 'Who the token belongs to.' }, async () => ({
    content: [{ type: 'text', text: 'alice' }],
  }));
  server.registerTool('write', { description: 'Needs mcp:write.', inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: 'text', text: `wrote ${text}` }],
  }));
  return server;
}

const listen = (app) => new Promise((resolve) => {
  const srv = app.listen(0, '127.0.0.1', () => resolve(srv));
});

const asApp = express();
const mcpApp = express();
const asServer = await listen(asApp);
const mcpListener = await listen(mcpApp);
const issuer = new URL(`http://127.0.0.1:${asServer.address().port}/`);
const mcpBase = `http://127.0.0.1:${mcpListener.address().port}`;
const resource = new URL(`${mcpBase}/mcp`);
const provider = new Provider(resource);
const noLimit = { rateLimit: false };

asApp.use(mcpAuthRouter({
  provider,
  issuerUrl: issuer,
  scopesSupported: SCOPES,
  resourceServerUrl: resource,
  authorizationOptions: noLimit,
  tokenOptions: noLimit,
  clientRegistrationOptions: noLimit,
  revocationOptions: noLimit,
}));

const metadataUrl = `${mcpBase}/.well-known/oauth-protected-resource/mcp`;
mcpApp.use(mcpAuthMetadataRouter({
  oauthMetadata: createOAuthMetadata({ provider, issuerUrl: issuer, scopesSupported: SCOPES }),
  resourceServerUrl: resource,
  scopesSupported: SCOPES,
  resourceName: 'ts-sdk-protected',
}));
mcpApp.get('/test/stats', (req, res) => res.json(stats));
mcpApp.use('/mcp', (req, res, next) => {
  res.on('finish', () => {
    if (res.statusCode === 401 || res.statusCode === 403) stats[res.statusCode] += 1;
    else stats.ok += 1;
  });
  next();
});
mcpApp.use('/mcp', requireBearerAuth({
  verifier: provider,
  requiredScopes: ['mcp:read'],
  resourceMetadataUrl: metadataUrl,
  expectedResource: resource,
}));
mcpApp.use('/mcp', express.json());
mcpApp.use('/mcp', (req, res, next) => {
  // Step-up: one tool needs more than the server-wide scope.
  const body = req.body;
  const wantsWrite = body && body.method === 'tools/call' && body.params?.name === 'write';
  if (wantsWrite && !req.auth.scopes.includes('mcp:write')) {
    res.set('WWW-Authenticate',
      `Bearer error="insufficient_scope", scope="${SCOPES.join(' ')}", resource_metadata="${metadataUrl}"`);
    res.status(403).json({ error: 'insufficient_scope' });
    return;
  }
  next();
});
mcpApp.post('/mcp', async (req, res) => {
  const server = mcpServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on('close', () => {
    transport.close();
    server.close();
  });
  await server.connect(transport);
  await transport.handleRequest(req, res, req.body);
});
mcpApp.all('/mcp', (req, res) => {
  res.status(405).set('Allow', 'POST').json({ jsonrpc: '2.0', error: { code: -32000, message: 'Method not allowed.' }, id: null });
});

process.stdin.on('end', () => process.exit(0)); // the test closed our stdin: stop
process.stdin.resume();
console.log(`PORT=${mcpListener.address().port}`);
