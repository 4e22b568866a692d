/**
 * Workspaces: GET /workspace (the caller's workspace, and for an API key the key itself), and
 * for the web interface, creating a workspace (its creator becomes its owner); its public keys (JWKS); its settings. One file per procedure.
 */
import { router } from '../../trpc';
import { getProcedure } from './get';
import { createProcedure } from './create';
import { jwksProcedure } from './jwks';
import { changeSettingsProcedure, settingsProcedure } from './settings';

export const workspacesRouter = router({
  get: getProcedure,
  create: createProcedure,
  jwks: jwksProcedure,
  settings: settingsProcedure,
  changeSettings: changeSettingsProcedure,
});
