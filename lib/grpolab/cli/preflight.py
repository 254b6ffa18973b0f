"""placeholder while in development"""
def register(sub):
    pass
