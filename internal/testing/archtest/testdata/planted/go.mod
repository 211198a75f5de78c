module github.com/tickgate/tickgate

go 1.26
