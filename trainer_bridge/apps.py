from django.apps import AppConfig


class TrainerBridgeConfig(AppConfig):
    """Pools, snapshots, export, the reward API and the trainer (issues 6-7)."""

    name = "trainer_bridge"
    verbose_name = "Trainer bridge"
