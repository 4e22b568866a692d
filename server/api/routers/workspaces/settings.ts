/** For the web interface: a workspace's settings (owners change them; each field given changes, the others stay). */
import { z } from 'zod';
import { decisionUrgencies } from '@/db/schema';
import { storedBytes } from '@/server/domain/artifacts/quota';
import { changeSettings, readSettings } from '@/server/domain/workspaces/settings';
import { humanMemberProcedure, humanOwnerProcedure } from '../../procedures';
import { id } from '../../schemas';

const settingsOutput = z.object({
  passkey_urgencies: z.array(z.enum(decisionUrgencies)),
  artifact_content_days: z.int().nullable(),
});

export const settingsProcedure = humanMemberProcedure
  .input(z.strictObject({ workspace_id: id() }))
  .output(
    settingsOutput.extend({
      // What the workspace stores of artifact content, and its quota (ARTIFACT_QUOTA_BYTES).
      artifact_storage: z.object({ used_bytes: z.int(), limit_bytes: z.int() }),
    }),
  )
  .query(({ ctx, actor }) =>
    ctx.runtime.db.transaction(async (tx) => ({
      ...(await readSettings(tx, actor.workspaceId)),
      artifact_storage: { used_bytes: await storedBytes(tx, actor.workspaceId), limit_bytes: ctx.runtime.env.ARTIFACT_QUOTA_BYTES },
    })),
  );

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
