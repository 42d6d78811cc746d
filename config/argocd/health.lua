-- Argo CD health check for serving.kubectl-llm.dev/ModelServing.
-- Healthy only when the operator observed the current generation and the serving is Available
-- with its rollout complete; Progressing while it rolls out; Degraded on Degraded=True or
-- ProgressDeadlineExceeded; Suspended while paused or while a canary waits for promotion.
local hs = { status = "Progressing", message = "Waiting for the kubectl-llm operator" }
if obj.status == nil then
  return hs
end
local gen = obj.metadata.generation
local seen = obj.status.observedGeneration
if gen ~= nil and (seen == nil or seen < gen) then
  hs.message = "Waiting for the operator to observe generation " .. tostring(gen)
  return hs
end
local conds = {}
if obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    conds[c.type] = c
  end
end
local function say(c)
  if c.message ~= nil and c.message ~= "" then
    return c.reason .. ": " .. c.message
  end
  return c.reason
end
local degraded, progressing, available = conds["Degraded"], conds["Progressing"], conds["Available"]
if degraded ~= nil and degraded.status == "True" then
  hs.status = "Degraded"
  hs.message = say(degraded)
  return hs
end
if progressing ~= nil and progressing.reason == "ProgressDeadlineExceeded" then
  hs.status = "Degraded"
  hs.message = say(progressing)
  return hs
end
if progressing ~= nil and (progressing.reason == "RolloutPaused" or progressing.reason == "CanaryHeld") then
  hs.status = "Suspended"
  hs.message = say(progressing)
  return hs
end
if available ~= nil and available.status == "True" and progressing ~= nil and progressing.reason == "RolloutComplete" then
  hs.status = "Healthy"
  hs.message = say(progressing)
  return hs
end
if progressing ~= nil then
  hs.message = say(progressing)
elseif available ~= nil then
  hs.message = say(available)
end
return hs
