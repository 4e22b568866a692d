/** For the web interface: a workspace's settings (owners change them). */
import { z } from 'zod';
import { decisionUrgencies } from '@/db/schema';
import { changeSettings, readSettings } from '@/server/domain/workspaces/settings';
import { humanMemberProcedure, humanOwnerProcedure } from '../../procedures';
import { id } from '../../schemas';

const settingsOutput = z.object({ passkey_urgencies: z.array(z.enum(decisionUrgencies)) });

export const settingsProcedure = humanMemberProcedure
  .input(z.strictObject({ workspace_id: id() }))
  .output(settingsOutput)
  .query(({ ctx, actor }) => ctx.runtime.db.transaction((tx) => readSettings(tx, actor.workspaceId)));

export const changeSettingsProcedure = humanOwnerProcedure
  .input(z.strictObject({ workspace_id: id(), passkey_urgencies: z.array(z.enum(decisionUrgencies)).max(4) }))
  .output(settingsOutput)
  .mutation(({ ctx, actor, input }) =>
    ctx.runtime.db.transaction((tx) => changeSettings(tx, actor, { passkey_urgencies: input.passkey_urgencies })),
  );
