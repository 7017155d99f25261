import { interactionPolicy, type KoaContextWithOIDC } from 'oidc-provider';
import { allowedScopesOf } from './client-metadata.js';

const { base, Check, Prompt } = interactionPolicy;

/**
 * OIDC "Initiating User Registration" (prompt=create): an accepted prompt value, never a screen of its
 * own. The login prompt asks for a person as always; /:lang/auth reads `prompt=create` from the
 * interaction's parameters and opens registration instead of sign-in (src/oidc/actions/interaction.ts).
 */
function createPrompt() {
  const prompt = new Prompt({ name: 'create', requestable: true });
  // The engine's own "create was asked and not answered" check would show a screen of its own.
  prompt.checks.remove('create_prompt');
  return prompt;
}

/**
 * The engine's login + consent prompts, with the consent check changed to look only at scopes the
 * client is allowed: the rest are filtered out (spec: requested scopes are filtered against
 * allowed_scopes), so they must not keep the consent screen coming back. The resource-server scope
 * check goes: our one resource server's scopes mirror the OIDC scopes granted at consent.
 */
export function createInteractionPolicy() {
  const policy = base();
  policy.add(createPrompt(), 0);
  const consent = policy.get('consent')!;
  consent.checks.remove('op_scopes_missing');
  consent.checks.remove('rs_scopes_missing');
  consent.checks.add(
    new Check(
      'op_scopes_missing',
      'requested scopes not granted',
      (ctx: KoaContextWithOIDC) =>
        missingScopes(ctx).length > 0 ? Check.REQUEST_PROMPT : Check.NO_NEED_TO_PROMPT,
      (ctx: KoaContextWithOIDC) => ({ missingOIDCScope: missingScopes(ctx) }),
    ),
  );
  return policy;
}

/** Requested scopes the client may have and the user has not yet consented to. */
export function missingScopes(ctx: KoaContextWithOIDC): string[] {
  const { oidc } = ctx;
  const allowed = new Set(allowedScopesOf(oidc.client as never));
  const granted = new Set(oidc.grant?.getOIDCScopeEncountered().split(' ') ?? []);
  return [...oidc.requestParamOIDCScopes].filter((scope) => allowed.has(scope) && !granted.has(scope));
}
