// Who a console viewer is to the broker's ACL: the signed-in admin user's name as the MQTT
// username, `console-<name>` as the client id, the browser's address as the peer host, asking to
// subscribe to the filter. The ACL policy chain answers first (as it does for a client's
// SUBSCRIBE); when every policy ignores, the static ACL decides: auth.acl, then the Mosquitto ACL
// file (read now, so a reloaded file applies), then auth.aclDefault. An admin user is no MQTT
// superuser: what its name may not subscribe to, its page may not watch.
import type { BrokerConfig } from '../../config/index.ts';
import type { AclAnswer, AclQuery } from '../../policies/types.ts';
import { StaticAuthorizer } from '../../auth/static-authorizer.ts';
import { ReloadableFile } from '../../auth/mosquitto/reloadable-file.ts';
import { parseAclFile } from '../../auth/mosquitto/acl-file.ts';
import type { ViewerAcl } from './message-viewers.ts';

export const CONSOLE_CLIENT_PREFIX = 'console-';

export function consoleViewerAcl(
  policies: { authorize(q: AclQuery): Promise<{ answer: AclAnswer }> },
  auth: BrokerConfig['auth'],
): ViewerAcl {
  return async (who, filter) => {
    const clientId = `${CONSOLE_CLIENT_PREFIX}${who.username}`;
    const refused = `the ACL does not let ${who.username} subscribe to ${filter}`;
    const { answer } = await policies.authorize({ clientid: clientId, username: who.username, peerhost: who.remoteAddress, action: 'subscribe', topic: filter });
    if (answer.result === 'allow') return null;
    if (answer.result === 'deny') return refused;
    const mosquittoAcl = auth.aclFile !== '' ? new ReloadableFile(auth.aclFile, parseAclFile) : undefined;
    const fallback = new StaticAuthorizer({ acl: auth.acl, aclDefault: auth.aclDefault, mosquittoAcl });
    return fallback.authorize({ clientId, username: who.username }, 'subscribe', filter) ? null : refused;
  };
}
