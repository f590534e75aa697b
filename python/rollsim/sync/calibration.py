STACKS = {}
