"""Database-level guard: rows of task versions and solutions cannot be updated.

The model layer refuses too, but this catches raw SQL, bulk updates and any
code path that forgets; on PostgreSQL the refusal is an IntegrityError.
"""

from django.db import migrations

TABLES = ("tasks_app_taskversion", "tasks_app_solution")

PG_FUNCTION = """
CREATE OR REPLACE FUNCTION tasks_app_refuse_update() RETURNS trigger AS $$
BEGIN
    RAISE EXCEPTION 'rows of %% are immutable: save changed content as a new version', TG_TABLE_NAME
        USING ERRCODE = 'integrity_constraint_violation';
END;
$$ LANGUAGE plpgsql;
"""


def install(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_FUNCTION)
        for table in TABLES:
            schema_editor.execute(
                f"CREATE TRIGGER {table}_immutable BEFORE UPDATE ON {table} "
                "FOR EACH ROW EXECUTE FUNCTION tasks_app_refuse_update();"
            )
    elif vendor == "sqlite":
        for table in TABLES:
            schema_editor.execute(
                f"CREATE TRIGGER {table}_immutable BEFORE UPDATE ON {table} BEGIN "
                f"SELECT RAISE(ABORT, 'rows of {table} are immutable: save changed content as a new version'); END;"
            )


def uninstall(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    for table in TABLES:
        if vendor == "postgresql":
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_immutable ON {table};")
        elif vendor == "sqlite":
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {table}_immutable;")
    if vendor == "postgresql":
        schema_editor.execute("DROP FUNCTION IF EXISTS tasks_app_refuse_update();")


class Migration(migrations.Migration):
    dependencies = [("tasks_app", "0001_initial")]
    operations = [migrations.RunPython(install, uninstall)]
