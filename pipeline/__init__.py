"""The container-overhead study: lab, collection and analysis code used by the notebooks."""
