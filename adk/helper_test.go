package adk_test

func runHelperProcess() {}
