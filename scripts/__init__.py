"""Project scripts. ``scripts.services`` runs the real services for the tests and the dev stack."""
