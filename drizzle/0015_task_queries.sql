DROP INDEX "initiatives_workspace_idx";--> statement-breakpoint
DROP INDEX "receipts_workspace_idx";--> statement-breakpoint
DROP INDEX "tasks_workspace_idx";--> statement-breakpoint
DROP INDEX "runs_workspace_idx";--> statement-breakpoint
CREATE INDEX "initiatives_workspace_created_idx" ON "initiatives" USING btree ("workspace_id","created_at","id");--> statement-breakpoint
CREATE INDEX "receipts_workspace_created_idx" ON "receipts" USING btree ("workspace_id","created_at","id");--> statement-breakpoint
CREATE INDEX "tasks_queue_idx" ON "tasks" USING btree ("workspace_id","status",(case "priority" when 'urgent' then 0 when 'high' then 1 when 'medium' then 2 else 3 end),"created_at","id");--> statement-breakpoint
CREATE INDEX "tasks_priority_idx" ON "tasks" USING btree ("workspace_id",(case "priority" when 'urgent' then 0 when 'high' then 1 when 'medium' then 2 else 3 end),"created_at","id");--> statement-breakpoint
CREATE INDEX "tasks_updated_idx" ON "tasks" USING btree ("workspace_id","updated_at","id");--> statement-breakpoint
CREATE INDEX "runs_workspace_created_idx" ON "runs" USING btree ("workspace_id","created_at","id");--> statement-breakpoint
CREATE INDEX "decisions_task_idx" ON "decisions" USING btree ("task_id");