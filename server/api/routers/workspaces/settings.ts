/** For the web interface: a workspace's settings (owners change them; each field given changes, the others stay). */
import { z } from 'zod';
import { decisionUrgencies } from '@/db/schema';
import { changeSettings, readSettings } from '@/server/domain/workspaces/settings';
import { humanMemberProcedure, humanOwnerProcedure } from '../../procedures';
import { id } from '../../schemas';

const settingsOutput = z.object({
  passkey_urgencies: z.array(z.enum(decisionUrgencies)),
  artifact_content_days: z.int().nullable(),
});

export const settingsProcedure = humanMemberProcedure
  .input(z.strictObject({ workspace_id: id() }))
  .output(settingsOutput)
  .query(({ ctx, actor }) => ctx.runtime.db.transaction((tx) => readSettings(tx, actor.workspaceId)));

export const changeSettingsProcedure = humanOwnerProcedure
  .input(
    z.strictObject({
      workspace_id: id(),
      passkey_urgencies: z.array(z.enum(decisionUrgencies)).max(4).optional(),
      artifact_content_days: z.int().min(1).max(3650).nullable().optional(),
    }),
  )
  .output(settingsOutput)
  .mutation(({ ctx, actor, input }) => {
    const { workspace_id: _w, ...changes } = input;
    return ctx.runtime.db.transaction((tx) => changeSettings(tx, actor, changes));
  });
