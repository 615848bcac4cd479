"""(layout comment to come)"""
