"""The reward API in the shapes that common RL trainers call: a TRL `reward_funcs`
callable (trl.py), a verl `compute_score` function (verl.py), and an OpenRLHF
remote reward server answering POST /get_reward (openrlhf.py). Each is a thin
layer over trainer_bridge.client; none scores a failed sandbox as 0."""
