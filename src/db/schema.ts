/**
 * The Kysely view of the database: one interface per table, snake_case like the columns.
 * Migrations in migrations/ create these tables; docs/schema.md explains them.
 * @module
 */

// Tables are added by the migrations that create them.
// eslint-disable-next-line @typescript-eslint/no-empty-object-type
export interface Database {}
