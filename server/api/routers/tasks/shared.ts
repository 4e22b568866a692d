/** What the procedures of tasksRouter share: the task with its version, and the builder of those that act on one task. */
import { z } from 'zod';
import { tasks, type MembershipRole } from '@/db/schema';
import { AppError } from '@/server/errors';
import { resourceProcedure } from '../../procedures';
import { taskSchema } from './task-schema';

export const versionedTask = taskSchema.extend({ aggregateVersion: z.int() }).meta({ id: 'VersionedTask' });

export const noSuchTask = () => new AppError('not_found', 'No such task in your workspace.');

/** Acting on the task the input names (`id`): 404 for anyone outside its workspace. */
export const taskProcedure = (roles?: readonly MembershipRole[]) => resourceProcedure(tasks, 'id', noSuchTask, roles);
