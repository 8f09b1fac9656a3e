; Home Assistant Benchmark (HAB) rearrangement domain for the TP-SRL task planner.
;
; Follows habitat-lab's replica_cad domain (multi_task/domain_configs/replica_cad.yaml):
; the same actions and preconditions, written as plain PDDL so that the maintained `pddl`
; library parses it. Entities: movable objects, goals (one per target object, where it must
; end up) and articulated containers (the fridge with a hinged door, cabinet drawers).
; `robot_at` holds for the entity the robot last navigated to (and, after nav_to_receptacle,
; for the object or goal inside that container); the simulator-side predicate is "base within
; 2 m", see planner/predicates.py and configs/planner.yaml.
(define (domain hab_rearrange)
  (:requirements :strips :typing :negative-preconditions :universal-preconditions
                 :conditional-effects)
  (:types
    movable goal container - entity
    fridge cab - container)

  (:predicates
    (holding ?o - movable)                  ; the suction gripper holds ?o
    (hand_empty)                            ; the gripper holds nothing
    (in ?e - entity ?c - container)         ; object (or goal position) inside a fridge / drawer
    (object_at ?o - movable ?g - goal)      ; ?o rests at goal ?g (not held)
    (goal_of ?g - goal ?o - movable)        ; static: ?g is where ?o has to go
    (robot_at ?e - entity)                  ; the robot base is close to ?e
    (opened_fridge ?f - fridge)
    (closed_fridge ?f - fridge)
    (opened_cab ?c - cab)
    (closed_cab ?c - cab))

  ; Navigate to an object, a goal or a container. The robot is then at ?e and nowhere else.
  (:action nav
    :parameters (?e - entity)
    :precondition (not (robot_at ?e))
    :effect (and (forall (?y - entity) (not (robot_at ?y)))
                 (robot_at ?e)))

  ; Navigate to a container to reach what is inside it (habitat's nav_to_receptacle): the
  ; robot is then at the container and at the object or goal inside it.
  (:action nav_to_receptacle
    :parameters (?c - container ?e - entity)
    :precondition (and (in ?e ?c) (not (and (robot_at ?c) (robot_at ?e))))
    :effect (and (forall (?y - entity) (not (robot_at ?y)))
                 (robot_at ?c)
                 (robot_at ?e)))

  ; Pick: at the object, gripper empty, and a container holding the object is open. Habitat asks
  ; only for "not closed"; with re-planning from the observed state, a door left half open (neither
  ; opened nor closed) would then skip open_fridge and send the arm against the door.
  (:action pick
    :parameters (?o - movable)
    :precondition (and (robot_at ?o)
                       (hand_empty)
                       (forall (?f - fridge) (not (and (in ?o ?f) (not (opened_fridge ?f)))))
                       (forall (?k - cab) (not (and (in ?o ?k) (not (opened_cab ?k))))))
    :effect (and (holding ?o)
                 (not (hand_empty))
                 (forall (?c - container) (not (in ?o ?c)))
                 (forall (?g - goal) (not (object_at ?o ?g)))))

  ; Place: holding the object, at its goal, and a container holding the goal is open (as pick).
  ; The object ends up in whatever container holds the goal.
  (:action place
    :parameters (?o - movable ?g - goal)
    :precondition (and (holding ?o)
                       (goal_of ?g ?o)
                       (robot_at ?g)
                       (forall (?f - fridge) (not (and (in ?g ?f) (not (opened_fridge ?f)))))
                       (forall (?k - cab) (not (and (in ?g ?k) (not (opened_cab ?k))))))
    :effect (and (not (holding ?o))
                 (hand_empty)
                 (object_at ?o ?g)
                 (forall (?c - container) (when (in ?g ?c) (in ?o ?c)))))

  (:action open_fridge
    :parameters (?f - fridge)
    :precondition (and (robot_at ?f) (hand_empty) (not (opened_fridge ?f)))
    :effect (and (opened_fridge ?f) (not (closed_fridge ?f))))

  (:action close_fridge
    :parameters (?f - fridge)
    :precondition (and (robot_at ?f) (hand_empty) (not (closed_fridge ?f)))
    :effect (and (closed_fridge ?f) (not (opened_fridge ?f))))

  (:action open_cab
    :parameters (?k - cab)
    :precondition (and (robot_at ?k) (hand_empty) (not (opened_cab ?k)))
    :effect (and (opened_cab ?k) (not (closed_cab ?k))))

  (:action close_cab
    :parameters (?k - cab)
    :precondition (and (robot_at ?k) (hand_empty) (not (closed_cab ?k)))
    :effect (and (closed_cab ?k) (not (opened_cab ?k))))
)
