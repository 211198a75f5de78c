//go:build tools

// Package oapicodegen pins oapi-codegen, which generates the typed Go client (client/) from
// api/openapi.yaml (make generate-client).
package oapicodegen

import _ "github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen"
