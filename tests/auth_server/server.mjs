// A real OAuth 2.1 / OpenID Connect authorization server for mcpsync's tests:
// oidc-provider (OpenID Certified) on 127.0.0.1, ephemeral port, with dynamic
// client registration, PKCE S256, resource indicators (RFC 8707) issuing JWT
// access tokens for the MCP server, refresh-token rotation, and login/consent
// approved automatically (user "alice") so a test "browser" made of plain HTTP
// requests can go through it.  Prints "PORT=<n>" once it listens.
//
// DPoP (RFC 9449) is on, as oidc-provider ships it: a token request with a DPoP
// proof gets a DPoP-bound token (cnf.jkt in the JWT).  --dpop-nonce makes the
// token endpoint require a server nonce (use_dpop_nonce + DPoP-Nonce first).
//
// GET /test/token-delay?seconds=N makes the token endpoint hang N seconds (a slow
// authorization server); a client that gave up by then gets no answer.
//
// Usage: node server.mjs [--ttl SECONDS] [--dpop-nonce]
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import Provider from 'oidc-provider';

const ttlArg = process.argv.indexOf('--ttl');
const accessTokenTTL = ttlArg > 0 ? Number(process.argv[ttlArg + 1]) : 300;
const requireNonce = process.argv.includes('--dpop-nonce');
const stats = { token: 0, refresh: 0, register: 0, authorize: 0, dpop_token: 0, dpop_nonce: 0 };
// Seconds the token endpoint waits before answering (GET /test/token-delay?seconds=N sets it).
let tokenDelay = 0;

const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  const issuer = `http://127.0.0.1:${port}`;
  const provider = new Provider(issuer, {
    clients: [],
    scopes: ['openid', 'offline_access', 'mcp:read', 'mcp:write'],
    pkce: { required: () => true },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      revocation: { enabled: true },
      dPoP: {
        enabled: true,
        nonceSecret: randomBytes(32),
        requireNonce: () => requireNonce,
      },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => undefined,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, resourceIndicator) => ({
          scope: 'mcp:read mcp:write',
          audience: resourceIndicator,
          accessTokenTTL,
          accessTokenFormat: 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
    rotateRefreshToken: true,
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
    interactions: { url: (ctx, interaction) => `/interaction/${interaction.uid}` },
    ttl: { Interaction: 300, Session: 3600, Grant: 3600, AuthorizationCode: 60, RefreshToken: 3600 },
  });
  provider.proxy = false;

  provider.use(async (ctx, next) => {
    if (ctx.path === '/test/stats') {
      ctx.body = stats;
      return;
    }
    if (ctx.path.startsWith('/interaction/')) {
      // Approve login and consent at once, for everything the client asked.
      const details = await provider.interactionDetails(ctx.req, ctx.res);
      const { prompt, params, session } = details;
      let result;
      if (prompt.name === 'login') {
        result = { login: { accountId: 'alice' } };
      } else {
        const grant = details.grantId
          ? await provider.Grant.find(details.grantId)
          : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
        const d = prompt.details;
        if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
        if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
        for (const [indicator, scopes] of Object.entries(d.missingResourceScopes || {})) {
          grant.addResourceScope(indicator, scopes.join(' '));
        }
        result = { consent: { grantId: await grant.save() } };
      }
      ctx.respond = false;
      await provider.interactionFinished(ctx.req, ctx.res, result, { mergeWithLastSubmission: false });
      return;
    }
    if (ctx.path === '/test/token-delay') {
      tokenDelay = Number(ctx.query.seconds || 0);
      ctx.body = { tokenDelay };
      return;
    }
    if (ctx.path === '/token' && ctx.method === 'POST') {
      stats.token += 1;
      if (tokenDelay > 0) {
        // A hanging token endpoint: answer only after the delay, and not at all to a
        // client that gave up meanwhile (its request, refresh token included, is unspent).
        const socket = ctx.req.socket;
        await new Promise((resolve) => {
          const timer = setTimeout(done, tokenDelay * 1000);
          function done() {
            clearTimeout(timer);
            socket.off('close', done);
            resolve();
          }
          socket.once('close', done);
        });
        if (socket.destroyed) {
          ctx.respond = false;
          return;
        }
      }
      if (ctx.get('DPoP')) stats.dpop_token += 1;
      await next();
      if (ctx.body && ctx.body.error === 'use_dpop_nonce') stats.dpop_nonce += 1;
      return;
    }
    if (ctx.path === '/reg' && ctx.method === 'POST') stats.register += 1;
    if (ctx.path === '/auth') stats.authorize += 1;
    await next();
  });
  provider.on('grant.success', (ctx) => {
    if (ctx.oidc.params.grant_type === 'refresh_token') stats.refresh += 1;
  });
  provider.on('server_error', (ctx, err) => console.error('server_error', err));

  server.on('request', provider.callback());
  console.log(`PORT=${port}`);
});

process.on('SIGTERM', () => server.close(() => process.exit(0)));
process.stdin.on('end', () => process.exit(0));  // the test ended: do not outlive it
process.stdin.resume();
