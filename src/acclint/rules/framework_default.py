RULES = []
