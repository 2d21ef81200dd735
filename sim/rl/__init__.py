"""Foursquare for people who train agents: Gymnasium environments and a policy adapter.

Install the extra (``pip install -e '.[rl]'``, which brings gymnasium), then::

    import gymnasium as gym
    import sim.rl                     # registers foursquare_sim/Foursquare-v0

    env = gym.make("foursquare_sim/Foursquare-v0", rules=sim.Rules(max_face_down=3), reward="win")
    envs = gym.make_vec("foursquare_sim/Foursquare-v0", num_envs=4096)   # the compiled vector env

``gym.make("sim.rl:foursquare_sim/Foursquare-v0")`` imports this package
itself. (Gymnasium 1.x reads no entry points: an environment is registered
by importing the package that registers it.)

Modules: `env` (`FoursquareEnv`, `FlatObservation`), `vector`
(`FoursquareVectorEnv`), `kernels` (the compiled steps), `observation` (the
observation's layout), `render` (the RGB image) and `adapter`
(`ObservationPolicy`: a callable on observations as a `--policy` plugin).
`adapter` and `observation` work without gymnasium.
"""

ENV_ID = "foursquare_sim/Foursquare-v0"
"""The id of the environment in Gymnasium's registry."""

try:
    import gymnasium as _gym
except ImportError:  # the adapter works without the extra; the environments need it
    _gym = None

if _gym is not None and ENV_ID not in _gym.registry:
    _gym.register(id=ENV_ID, entry_point="sim.rl.env:FoursquareEnv",
                  vector_entry_point="sim.rl.vector:FoursquareVectorEnv")
