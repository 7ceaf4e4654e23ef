/*
 * disaggsim: starts each flow of a transport at its start time (shared by every transport).
 */
#ifndef DISAGGSIM_FLOW_START_SCHEDULER_H
#define DISAGGSIM_FLOW_START_SCHEDULER_H

#include "ns3/nstime.h"

#include <cstdint>
#include <functional>
#include <vector>

namespace ns3
{

/**
 * \brief Calls a transport's start callback for each flow at simulation time
 * origin + startNs - lead, in start order (flows with equal starts in the order they were
 * added), with one pending simulator event at a time (the next distinct start), so a run of
 * n flows costs at most n events here.
 *
 * Two ways to begin: ScheduleNow() (the first Add of a transport with no warm-up: the first
 * event runs at once and starts every flow already due), or Begin() once every flow is known
 * (a transport with a warm-up, e.g. TCP opens connections first: the first event is at the
 * first start).  Flows may be added after the run began as long as they do not start in the
 * past (the remaining flows are sorted again at the next event).
 */
class FlowStartScheduler
{
  public:
    /// Called with the index the flow was given by Add.
    typedef std::function<void (uint64_t index)> StartCallback;

    /// \p origin: simulation time of trace time 0; \p lead: how much earlier than its start
    /// a flow is handed over (e.g. TimeStep (1) when the transport defers its first send).
    void SetOrigin (Time origin, Time lead = Time (0));
    void SetStartCallback (StartCallback callback);

    /// Register flow \p index starting at trace time \p startNs.
    void Add (uint64_t index, int64_t startNs);
    /// Schedule a start event now if none is pending (see the class doc).
    void ScheduleNow ();
    /// Sort the flows and schedule the first start event at the first start time.
    void Begin ();

    std::size_t GetNFlows () const
    {
        return m_entries.size ();
    }

    std::size_t GetNStarted () const
    {
        return m_next;
    }

  private:
    struct Entry
    {
        int64_t startNs;
        uint64_t index;
    };

    Time StartTime (const Entry& entry) const;
    void SortRemaining ();
    void StartDue ();

    StartCallback m_start;
    Time m_origin;
    Time m_lead;
    std::vector<Entry> m_entries;
    std::size_t m_next{0};
    bool m_sorted{true};
    bool m_pending{false};
};

} // namespace ns3

#endif // DISAGGSIM_FLOW_START_SCHEDULER_H
