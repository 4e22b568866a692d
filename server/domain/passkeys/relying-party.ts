/**
 * The WebAuthn relying party is this service as its users reach it: APP_URL. Its host is the RP ID
 * (so an APP_URL of http://127.0.0.1:3000 cannot have passkeys: browsers refuse an IP address as
 * an RP ID; use http://localhost:3000 or a name), its origin what the browser's clientDataJSON
 * must name.
 */
export interface RelyingParty {
  id: string;
  origin: string;
  name: string;
}

export function relyingParty(appUrl: string): RelyingParty {
  const url = new URL(appUrl);
  return { id: url.hostname, origin: url.origin, name: 'Accountable Work Service' };
}
