# `make test` is the README's test command, bash scripts/test.sh: it
# installs what the tests need when it is missing, then runs go test ./...
# (ARGS are passed on: make test ARGS='-count=1 -v').
.PHONY: test
test:
	bash scripts/test.sh $(ARGS)
