"""Grading package of the max_pool_backward nbgrader course.

Students never receive it: it is installed in the grading environment only.
"""

from .reference import max_pool_backward, max_pool_forward

__all__ = ["max_pool_backward", "max_pool_forward"]
