from django.db import migrations, models


class Migration(migrations.Migration):
    initial = True

    dependencies: list[tuple[str, str]] = []

    operations = [
        migrations.CreateModel(
            name="McpToken",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("user_key", models.CharField(max_length=150)),
                ("key_hash", models.CharField(max_length=64)),
                ("sealed", models.TextField()),
                ("updated", models.DateTimeField(auto_now=True)),
            ],
            options={"db_table": "mcpsync_token"},
        ),
        migrations.AddConstraint(
            model_name="mcptoken",
            constraint=models.UniqueConstraint(fields=("user_key", "key_hash"), name="mcpsync_token_user_key"),
        ),
    ]
