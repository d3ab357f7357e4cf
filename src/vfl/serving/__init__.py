"""Using a trained model: batch prediction (``vfl predict``) and the scoring service.

The model itself, loaded from a run's bundles, is ``vfl.run.predict.Model``; this package reads
and writes the user's files around it and hosts the command-line entry points.
"""
