"""Trajectories: the searches of one agent task, remembered so each step brings what is new.

``copies`` tells passages that are copies of each other; ``state`` is what a trajectory has
touched and how a step's candidates become its answer (pure logic); ``store`` keeps it in the KV,
where every search process reads it; ``service`` runs a step through the search service.
"""
