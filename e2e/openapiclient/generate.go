package openapiclient

// The client is generated from the API reference by oapi-codegen, pinned;
// `make openapi-check` regenerates it and fails when the committed file
// differs (README, "The API").
//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -config config.yaml ../../api/openapi.yaml
