"""The bundled RL trainer: GRPO over an exported snapshot, rewards from the reward
API, multi-turn repair episodes. Started as `python -m trainer_bridge.train`; see
docs/trainer.md. torch and transformers are imported lazily (requirements-train.txt):
the web app and the sandbox workers never load them."""
