/*
 * disaggsim: starts each flow of a transport at its start time.
 */
#include "flow-start-scheduler.h"

#include "ns3/abort.h"
#include "ns3/simulator.h"

#include <algorithm>

namespace ns3
{

void
FlowStartScheduler::SetOrigin (Time origin, Time lead)
{
    m_origin = origin;
    m_lead = lead;
}

void
FlowStartScheduler::SetStartCallback (StartCallback callback)
{
    m_start = std::move (callback);
}

void
FlowStartScheduler::Add (uint64_t index, int64_t startNs)
{
    if (!m_entries.empty () && startNs < m_entries.back ().startNs)
    {
        m_sorted = false;
    }
    m_entries.push_back (Entry{startNs, index});
}

Time
FlowStartScheduler::StartTime (const Entry& entry) const
{
    return m_origin + NanoSeconds (entry.startNs) - m_lead;
}

void
FlowStartScheduler::SortRemaining ()
{
    if (!m_sorted)
    {
        std::stable_sort (m_entries.begin () + static_cast<std::ptrdiff_t> (m_next),
                          m_entries.end (),
                          [] (const Entry& a, const Entry& b) { return a.startNs < b.startNs; });
        m_sorted = true;
    }
}

void
FlowStartScheduler::ScheduleNow ()
{
    if (!m_pending)
    {
        m_pending = true;
        Simulator::ScheduleNow (&FlowStartScheduler::StartDue, this);
    }
}

void
FlowStartScheduler::Begin ()
{
    SortRemaining ();
    if (!m_pending && m_next < m_entries.size ())
    {
        m_pending = true;
        Simulator::Schedule (StartTime (m_entries[m_next]) - Simulator::Now (),
                             &FlowStartScheduler::StartDue, this);
    }
}

void
FlowStartScheduler::StartDue ()
{
    NS_ABORT_MSG_UNLESS (m_start, "FlowStartScheduler: no start callback");
    SortRemaining ();
    const Time now = Simulator::Now ();
    while (m_next < m_entries.size () && StartTime (m_entries[m_next]) <= now)
    {
        m_start (m_entries[m_next++].index);
    }
    if (m_next < m_entries.size ())
    {
        Simulator::Schedule (StartTime (m_entries[m_next]) - now, &FlowStartScheduler::StartDue,
                             this);
    }
    else
    {
        m_pending = false;
    }
}

} // namespace ns3
