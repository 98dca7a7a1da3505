import Support
