"""The two staff groups (issue 12): Viewers see every arena, markets and agents model read-only;
Operators also run the admin's actions. The actions' permissions are created here rather than
in the models' Meta because they guard admin operations, not the models' data.

Permissions and content types are created here, not left to post_migrate: on a fresh database
post_migrate runs after every migration, too late for the groups to be given them."""

from typing import Any

from django.db import migrations

APPS = ("arena", "markets", "agents")

# (app label, model, codename, name): what an Operator may run beyond viewing.
OPERATIONS = (
    ("arena", "cohort", "start_cohort", "Can start this week's cohort"),
    ("arena", "datarelease", "publish_datarelease", "Can publish a cohort's data release"),
    ("arena", "decision", "retry_decision", "Can retry decisions"),
    (
        "arena",
        "determinismcheck",
        "run_determinismcheck",
        "Can run the determinism audit (it costs money)",
    ),
    ("markets", "market", "resync_market", "Can re-read markets from the market source"),
    ("markets", "market", "check_market_resolution", "Can check and settle a market's resolution"),
)


def groups_create(apps, schema_editor):  # type: ignore[no-untyped-def]
    ContentType = apps.get_model("contenttypes", "ContentType")
    Permission = apps.get_model("auth", "Permission")
    Group = apps.get_model("auth", "Group")

    def permission(app_label: str, model_name: str, codename: str, name: str) -> Any:
        content_type, _ = ContentType.objects.get_or_create(app_label=app_label, model=model_name)
        found, _ = Permission.objects.get_or_create(
            content_type=content_type, codename=codename, defaults={"name": name[:255]}
        )
        return found

    views = [
        permission(
            model._meta.app_label,
            model._meta.model_name,
            f"view_{model._meta.model_name}",
            f"Can view {model._meta.verbose_name_raw}",
        )
        for app_label in APPS
        for model in apps.get_app_config(app_label).get_models()
    ]
    operations = [permission(*spec) for spec in OPERATIONS]
    viewers, _ = Group.objects.get_or_create(name="Viewers")
    viewers.permissions.add(*views)
    operators, _ = Group.objects.get_or_create(name="Operators")
    operators.permissions.add(*views, *operations)


def groups_delete(apps, schema_editor):  # type: ignore[no-untyped-def]
    apps.get_model("auth", "Group").objects.filter(name__in=["Viewers", "Operators"]).delete()
    apps.get_model("auth", "Permission").objects.filter(
        codename__in=[codename for _, _, codename, _ in OPERATIONS]
    ).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("arena", "0006_trade_scored_at_index"),
        ("markets", "0002_sync_run_recent"),
        ("agents", "0002_seed_lineup"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
    ]

    operations = [migrations.RunPython(groups_create, groups_delete)]
