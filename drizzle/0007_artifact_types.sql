CREATE TABLE "artifact_types" (
	"type_code" text PRIMARY KEY NOT NULL,
	"label" text NOT NULL,
	"summary" text NOT NULL,
	"domain" text NOT NULL,
	"stage" text NOT NULL,
	"workflow" text NOT NULL,
	"default_persona" text NOT NULL,
	"tags" text[] NOT NULL,
	"is_deliverable" boolean NOT NULL,
	"catalog_version" integer NOT NULL,
	"sort_order" integer NOT NULL
);
