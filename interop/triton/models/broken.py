"""broken: a model that never loads (the model_repository extension fixture)."""


class TritonPythonModel:
    def initialize(self, args):
        raise RuntimeError("the broken fixture never loads")

    def execute(self, requests):
        raise RuntimeError("unreachable: the model never loads")
