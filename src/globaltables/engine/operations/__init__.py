"""One module per DynamoDB operation; each exports `handle(engine, request) -> response`."""
