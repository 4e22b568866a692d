-- The MCP gateway: the upstream servers a workspace fronts (their headers sealed, never in an
-- event), the calls made to their tools (a projection of the tool_call.* events), and the mark on
-- a decision the gateway raised for a call.
CREATE TABLE "mcp_servers" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"version" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"name" text NOT NULL,
	"url" text NOT NULL,
	"headers_cipher" text,
	"header_names" text[] DEFAULT '{}'::text[] NOT NULL,
	"guards" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"default_mode" text DEFAULT 'ask' NOT NULL,
	"timeout_ms" integer DEFAULT 60000 NOT NULL,
	"tools" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"tools_listed_at" timestamp (3) with time zone,
	"last_error" text
);
--> statement-breakpoint
CREATE TABLE "tool_calls" (
	"id" uuid PRIMARY KEY NOT NULL,
	"workspace_id" uuid NOT NULL,
	"version" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp (3) with time zone DEFAULT now() NOT NULL,
	"server_id" uuid NOT NULL,
	"server" text NOT NULL,
	"tool" text NOT NULL,
	"mode" text NOT NULL,
	"status" text NOT NULL,
	"arguments_digest" text NOT NULL,
	"key_id" text NOT NULL,
	"run_id" uuid,
	"decision_id" uuid,
	"grant_id" uuid,
	"reason" text,
	"result_digest" text,
	"is_error" boolean,
	"duration_ms" integer,
	"returned_at" timestamp (3) with time zone
);
--> statement-breakpoint
ALTER TABLE "decisions" ADD COLUMN "gateway_server_id" uuid;--> statement-breakpoint
ALTER TABLE "mcp_servers" ADD CONSTRAINT "mcp_servers_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "tool_calls" ADD CONSTRAINT "tool_calls_workspace_id_workspaces_id_fk" FOREIGN KEY ("workspace_id") REFERENCES "public"."workspaces"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "mcp_servers_name_idx" ON "mcp_servers" USING btree ("workspace_id","name");--> statement-breakpoint
CREATE INDEX "tool_calls_server_idx" ON "tool_calls" USING btree ("workspace_id","server_id","created_at");--> statement-breakpoint
CREATE INDEX "tool_calls_decision_idx" ON "tool_calls" USING btree ("decision_id");--> statement-breakpoint
CREATE INDEX "tool_calls_run_idx" ON "tool_calls" USING btree ("run_id");