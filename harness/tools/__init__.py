"""The tools an episode offers an agent besides code: the atomic image tools, run in the sandbox's
kernel (:mod:`.atomic`), and the web tools, run through the providers (:mod:`.web`)."""
