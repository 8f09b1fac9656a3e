"""Tasks: what an episode asks of the robot (observations, action subsets, reward, termination).

`rearrange.tasks.base` defines the `Task` interface the env calls and `ExploreTask`; skill and HAB
tasks implement the same interface in their own modules.
"""
