import { oauthRoutes } from './provider.js';

/** The engine's paths without parameters, as it registered them. */
const staticPaths = new Set<string>([
  ...Object.values(oauthRoutes),
  `${oauthRoutes.end_session}/confirm`,
  `${oauthRoutes.end_session}/success`,
  '/.well-known/openid-configuration',
  '/.well-known/oauth-authorization-server',
]);
/** Where the engine resumes an authorization after the interaction: `/oauth/authorize/:uid`. */
const resumePrefix = `${oauthRoutes.authorization}/`;

/**
 * Whether a path is one the engine answers, spelled exactly as it registered it. The engine's router
 * also answers any letter case and a trailing slash (`/OAUTH/TOKEN`, `/oauth/token/`): spellings that
 * the per-client rate limits, the client_id checks and our own endpoints in front of it (userinfo,
 * end_session, introspection) match exactly, so such a request would skip all of them. It gets the 404
 * of a path nobody answers instead.
 */
export function isEnginePath(path: string): boolean {
  if (staticPaths.has(path)) return true;
  return (
    path.startsWith(resumePrefix) &&
    path.length > resumePrefix.length &&
    !path.includes('/', resumePrefix.length)
  );
}
