import { decodeProtectedHeader } from 'jose';
import type { Provider } from 'oidc-provider';
import { hasIdTokenType } from '../tokens/id-token-hint.js';

/**
 * The engine validates an id_token_hint (at authorize; at end_session ours does, in front of it) with
 * `IdToken.validate`, which checks signature, issuer and audience but not `typ`: an access token of
 * ours for the client's audience, signed by the same key, would pass as the user's ID token. A hint of
 * another type is refused here, before the engine reads it; the engine answers the error as for any
 * invalid hint (`invalid_request`, "could not validate id_token_hint").
 */
export function installIdTokenHintTypeCheck(provider: Provider): void {
  const { IdToken } = provider;
  const validate = IdToken.validate.bind(IdToken);
  IdToken.validate = async (hint, client) => {
    if (!hasIdTokenType(decodeProtectedHeader(hint))) {
      throw new Error('the id_token_hint is not an ID token (its typ)');
    }
    return validate(hint, client);
  };
}
