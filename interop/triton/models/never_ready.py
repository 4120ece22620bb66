"""never_ready: deployed at start like every fixture, but its load always fails, so it never
becomes ready while the server keeps serving the others (the not-ready fixture)."""


class TritonPythonModel:
    def initialize(self, args):
        raise RuntimeError("the never_ready fixture never loads")

    def execute(self, requests):
        raise RuntimeError("unreachable: the model never loads")
